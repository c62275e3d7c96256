"""Data files as the layers above see them: the key-value row layout of primary-key files and the rolling
writer that turns Arrow rows into files with Paimon's metadata (stats, key range, sequence numbers).

Paimon: org.apache.paimon.KeyValue, org.apache.paimon.io (RollingFileWriter, KeyValueFileWriterFactory)
"""
