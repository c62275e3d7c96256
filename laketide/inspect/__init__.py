"""Read-only views of a table's metadata for people: file listings, the LSM x-ray and the doctor.

Everything here reads snapshots, manifests and index manifests only, never data files.
"""
