"""a text source's blocks kept with its document

A web or text source's blocks (heading, paragraph, item, quote, code, row; their offsets in the
document's text), extracted once at upload and kept as JSON, so ``GET /v2/documents/{id}/text``
reads them from the database instead of extracting the original again per request. Null for a
PDF, and for a text source stored before this revision until its file is uploaded again: its
text is then served with its chunks as paragraphs.

Revision ID: 0004
Revises: 0003
Create Date: 2026-12-07
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("document") as batch:
        batch.add_column(sa.Column("text_blocks", sa.Text(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("document") as batch:
        batch.drop_column("text_blocks")
