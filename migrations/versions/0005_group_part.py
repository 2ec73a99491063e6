"""a platform nightly's moves can form more than one group: the part a kernel-scoped fact explains

Revision ID: 0005
Revises: 0004
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = '0005'
down_revision = '0004'
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("alert_groups", schema=None) as batch_op:
        batch_op.add_column(sa.Column('part', sa.String(length=32), nullable=False, server_default=''))
        batch_op.drop_constraint('uq_group_key', type_='unique')
        batch_op.create_unique_constraint('uq_group_key', ['source', 'first_bad_run_pk', 'platform_short', 'part'])


def downgrade() -> None:
    with op.batch_alter_table("alert_groups", schema=None) as batch_op:
        batch_op.drop_constraint('uq_group_key', type_='unique')
        batch_op.create_unique_constraint('uq_group_key', ['source', 'first_bad_run_pk', 'platform_short'])
        batch_op.drop_column('part')
