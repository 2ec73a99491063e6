"""event-level triage: the kind under each cause, and the end of an episode

Revision ID: 0004
Revises: 0003
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = '0004'
down_revision = '0003'
branch_labels = None
depends_on = None


def upgrade() -> None:
    for table in ("alerts", "alert_groups"):
        with op.batch_alter_table(table, schema=None) as batch_op:
            batch_op.add_column(sa.Column('cause_kind', sa.String(length=32), nullable=False, server_default=''))
            batch_op.add_column(sa.Column('end_run_pk', sa.Integer(), nullable=True))
            batch_op.create_foreign_key(f'fk_{table}_end_run', 'runs', ['end_run_pk'], ['id'])


def downgrade() -> None:
    for table in ("alerts", "alert_groups"):
        with op.batch_alter_table(table, schema=None) as batch_op:
            batch_op.drop_constraint(f'fk_{table}_end_run', type_='foreignkey')
            batch_op.drop_column('end_run_pk')
            batch_op.drop_column('cause_kind')
