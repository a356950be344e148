"""What the controller knows about the p4vtep pipeline: its artifacts, the
names of its tables, and how to build each kind of entry."""
