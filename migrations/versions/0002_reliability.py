"""reliability: outbox outcome_unknown, web_sessions

Revision ID: 0002
Revises: 0001

``outbox.outcome_unknown`` tells a Slack attempt that may have landed (crash, dropped answer)
from one Slack refused: only the former needs the ``conversations.history`` lookup, so a
refused post never blocks the queue behind a history method that fails. Rows attempted before
this revision keep the old rule (any earlier attempt is looked for).

``web_sessions`` lets sign-out revoke a session server side.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = '0002'
down_revision = '0001'
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table('outbox', schema=None) as batch_op:
        batch_op.add_column(sa.Column('outcome_unknown', sa.Boolean(), server_default=sa.false(), nullable=False))
    op.execute("UPDATE outbox SET outcome_unknown = (attempts > 0) WHERE state = 'pending'")
    op.create_table('web_sessions',
    sa.Column('sid_hash', sa.String(length=64), nullable=False),
    sa.Column('user', sa.String(length=255), nullable=False),
    sa.Column('created_at', sa.DateTime(), nullable=False),
    sa.Column('expires_at', sa.DateTime(), nullable=False),
    sa.PrimaryKeyConstraint('sid_hash')
    )
    with op.batch_alter_table('web_sessions', schema=None) as batch_op:
        batch_op.create_index('ix_web_sessions_expires', ['expires_at'], unique=False)


def downgrade() -> None:
    with op.batch_alter_table('web_sessions', schema=None) as batch_op:
        batch_op.drop_index('ix_web_sessions_expires')
    op.drop_table('web_sessions')
    with op.batch_alter_table('outbox', schema=None) as batch_op:
        batch_op.drop_column('outcome_unknown')
