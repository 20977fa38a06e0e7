"""a caller's chunks placed in their PDF's own text

A PDF document keeps its own text (``reading_text``: what a reader reads, in order), and each
chunk where it was found in it (``source_start``/``source_end``, as a text source's chunks
already had) and that stretch of it (``own_text``: a batch cuts its sentences from it, without
reading the document's whole text), how (``placement``: placed, partial, not_found, unchecked;
``placed_share``) and the pages the caller gave (``given_page_start``/``given_page_end``;
``page_start``/``page_end`` are the pages found). Null for rows stored before this revision:
they are answered as before, from their own text and pages, until their document is put again.

Revision ID: 0005
Revises: 0004
Create Date: 2026-12-07
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0005"
down_revision = "0004"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("document") as batch:
        batch.add_column(sa.Column("reading_text", sa.Text(), nullable=True))
    with op.batch_alter_table("chunk") as batch:
        batch.add_column(sa.Column("own_text", sa.Text(), nullable=True))
        batch.add_column(sa.Column("placement", sa.String(16), nullable=True))
        batch.add_column(sa.Column("placed_share", sa.Float(), nullable=True))
        batch.add_column(sa.Column("given_page_start", sa.Integer(), nullable=True))
        batch.add_column(sa.Column("given_page_end", sa.Integer(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("chunk") as batch:
        batch.drop_column("given_page_end")
        batch.drop_column("given_page_start")
        batch.drop_column("placed_share")
        batch.drop_column("placement")
        batch.drop_column("own_text")
    with op.batch_alter_table("document") as batch:
        batch.drop_column("reading_text")
