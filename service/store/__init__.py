"""The time-series store: schema, connection, writes and reads."""
