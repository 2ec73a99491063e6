"""health alerts: track flags, health alerts and their audit trail, health groups

Revision ID: 0003
Revises: 0002
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None


def upgrade() -> None:
    # add_column only: SQLite adds columns in place (a table rebuild would cascade-delete history)
    with op.batch_alter_table("alert_groups", schema=None) as batch_op:
        batch_op.add_column(sa.Column("kind", sa.String(length=16), server_default="move", nullable=False))
        batch_op.add_column(sa.Column("health_key", sa.String(length=64), nullable=True))
        batch_op.create_index("ix_alert_groups_health_key", ["health_key"], unique=False)
    op.create_table(
        "track_flags",
        sa.Column("track_id", sa.Integer(), nullable=False),
        sa.Column("run_pk", sa.Integer(), nullable=False),
        sa.Column("infra_missing", sa.Boolean(), nullable=False),
        sa.Column("run_failures", sa.JSON(), nullable=False),
        sa.Column("accuracy_failures", sa.JSON(), nullable=False),
        sa.Column("error", sa.Text(), nullable=True),
        sa.ForeignKeyConstraint(["run_pk"], ["runs.id"], ondelete="CASCADE"),
        sa.ForeignKeyConstraint(["track_id"], ["tracks.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("track_id", "run_pk"),
    )
    with op.batch_alter_table("track_flags", schema=None) as batch_op:
        batch_op.create_index("ix_track_flags_run", ["run_pk"], unique=False)
    op.create_table(
        "health_alerts",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("group_id", sa.Integer(), nullable=False),
        sa.Column("kind", sa.String(length=32), nullable=False),
        sa.Column("key", sa.String(length=512), nullable=False),
        sa.Column("source", sa.String(length=16), nullable=False),
        sa.Column("platform_short", sa.String(length=64), nullable=True),
        sa.Column("kernel", sa.String(length=255), nullable=True),
        sa.Column("detail", sa.Text(), nullable=False),
        sa.Column("shapes", sa.JSON(), nullable=False),
        sa.Column("state", sa.String(length=16), nullable=False),
        sa.Column("status", sa.String(length=16), nullable=False),
        sa.Column("run_pk", sa.Integer(), nullable=True),
        sa.Column("created_at", sa.DateTime(), nullable=False),
        sa.Column("updated_at", sa.DateTime(), nullable=False),
        sa.Column("recovered_at", sa.DateTime(), nullable=True),
        sa.ForeignKeyConstraint(["group_id"], ["alert_groups.id"]),
        sa.ForeignKeyConstraint(["run_pk"], ["runs.id"]),
        sa.PrimaryKeyConstraint("id"),
    )
    with op.batch_alter_table("health_alerts", schema=None) as batch_op:
        batch_op.create_index("ix_health_alerts_key_state", ["key", "state"], unique=False)
        batch_op.create_index("ix_health_alerts_group", ["group_id"], unique=False)
    op.create_table(
        "health_history",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("health_alert_id", sa.Integer(), nullable=False),
        sa.Column("at", sa.DateTime(), nullable=False),
        sa.Column("by", sa.String(length=255), nullable=False),
        sa.Column("action", sa.String(length=32), nullable=False),
        sa.Column("old_value", sa.Text(), nullable=True),
        sa.Column("new_value", sa.Text(), nullable=True),
        sa.Column("note", sa.Text(), nullable=True),
        sa.ForeignKeyConstraint(["health_alert_id"], ["health_alerts.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("id"),
    )
    with op.batch_alter_table("health_history", schema=None) as batch_op:
        batch_op.create_index("ix_health_history_health_alert_id", ["health_alert_id"], unique=False)


def downgrade() -> None:
    op.drop_table("health_history")
    op.drop_table("health_alerts")
    op.drop_table("track_flags")
    with op.batch_alter_table("alert_groups", schema=None) as batch_op:
        batch_op.drop_index("ix_alert_groups_health_key")
        batch_op.drop_column("health_key")
        batch_op.drop_column("kind")
