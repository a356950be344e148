"""Where VM bindings come from: the inventory file, libvirt, the API."""
