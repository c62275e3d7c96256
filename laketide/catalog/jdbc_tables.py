"""Paimon's JDBC metastore tables, column for column, so Java Paimon, pypaimon and laketide share one database.

Paimon: jdbc.JdbcUtils (CREATE_CATALOG_TABLE, CREATE_DATABASE_PROPERTIES_TABLE, CREATE_TABLE_PROPERTIES_TABLE,
CREATE_VIEW_TABLE) and the distributed lock dialects (SqlLite/Postgresql/MysqlDistributedLockDialect).
"""

from __future__ import annotations

import sqlalchemy as sa

__all__ = ["LOCKS", "METADATA", "TABLES", "DATABASE_PROPERTIES", "TABLE_PROPERTIES", "VIEWS", "LOCK_METADATA"]

# The lengths Java's DDL gives the columns: longer names and values do not fit (PostgreSQL refuses them).
NAME_LENGTH = 255
VALUE_LENGTH = 1000

METADATA = sa.MetaData()

TABLES = sa.Table(
    "paimon_tables", METADATA,
    sa.Column("catalog_key", sa.String(NAME_LENGTH), nullable=False, primary_key=True),
    sa.Column("database_name", sa.String(NAME_LENGTH), nullable=False, primary_key=True),
    sa.Column("table_name", sa.String(NAME_LENGTH), nullable=False, primary_key=True),
)

DATABASE_PROPERTIES = sa.Table(
    "paimon_database_properties", METADATA,
    sa.Column("catalog_key", sa.String(NAME_LENGTH), nullable=False, primary_key=True),
    sa.Column("database_name", sa.String(NAME_LENGTH), nullable=False, primary_key=True),
    sa.Column("property_key", sa.String(NAME_LENGTH), primary_key=True),
    sa.Column("property_value", sa.String(VALUE_LENGTH)),
)

TABLE_PROPERTIES = sa.Table(
    "paimon_table_properties", METADATA,
    sa.Column("catalog_key", sa.String(NAME_LENGTH), nullable=False, primary_key=True),
    sa.Column("database_name", sa.String(NAME_LENGTH), nullable=False, primary_key=True),
    sa.Column("table_name", sa.String(NAME_LENGTH), nullable=False, primary_key=True),
    sa.Column("property_key", sa.String(NAME_LENGTH), nullable=False, primary_key=True),
    sa.Column("property_value", sa.String(VALUE_LENGTH)),
)

VIEWS = sa.Table(
    "paimon_views", METADATA,
    sa.Column("catalog_key", sa.String(NAME_LENGTH), nullable=False, primary_key=True),
    sa.Column("database_name", sa.String(NAME_LENGTH), nullable=False, primary_key=True),
    sa.Column("view_name", sa.String(NAME_LENGTH), nullable=False, primary_key=True),
    sa.Column("view_schema", sa.Text(), nullable=False),
)

# Created only when lock.enabled, as in Java (JdbcUtils.createDistributedLockTable).
LOCK_METADATA = sa.MetaData()

LOCKS = sa.Table(
    "paimon_distributed_locks", LOCK_METADATA,
    sa.Column("lock_id", sa.String(NAME_LENGTH), nullable=False, primary_key=True),
    sa.Column("acquired_at", sa.TIMESTAMP(), nullable=False, server_default=sa.func.current_timestamp()),
    sa.Column("expire_time_seconds", sa.BigInteger(), nullable=False, server_default=sa.text("0")),
)
