"""highlights by id and the result cache

Revision ID: 0002
Revises: 0001
Create Date: 2026-11-23
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "highlight",
        sa.Column("id", sa.String(40), nullable=False),
        sa.Column("document_id", sa.String(128), nullable=False),
        sa.Column("document_sha256", sa.String(64), nullable=False),
        sa.Column("chunk_id", sa.String(256), nullable=False),
        sa.Column("page", sa.Integer(), nullable=False),
        sa.Column("data", sa.Text(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["document_id"],
            ["document.id"],
            name=op.f("fk_highlight_document_id_document"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_highlight")),
    )
    op.create_index(op.f("ix_highlight_document_id"), "highlight", ["document_id"])
    op.create_table(
        "result_cache",
        sa.Column("key", sa.String(64), nullable=False),
        sa.Column("response", sa.Text(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("key", name=op.f("pk_result_cache")),
    )
    op.create_index(op.f("ix_result_cache_created_at"), "result_cache", ["created_at"])


def downgrade() -> None:
    op.drop_index(op.f("ix_result_cache_created_at"), table_name="result_cache")
    op.drop_table("result_cache")
    op.drop_index(op.f("ix_highlight_document_id"), table_name="highlight")
    op.drop_table("highlight")
