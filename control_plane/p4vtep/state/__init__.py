"""Desired state and leadership shared by controller replicas.

protocol.py says what the controller needs (StateStore, Leadership); the etcd
implementation is etcd_store.py and leadership.py over etcd_connection.py.
See docs/ha.md.
"""
