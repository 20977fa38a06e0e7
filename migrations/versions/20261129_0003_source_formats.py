"""source formats: Office, HTML, Markdown and text documents beside PDFs

A document records its format (``pdf`` for every earlier row) and, when it was made from another
file, that file: its name as uploaded, its content hash and where it is stored. For an Office
file the document's own ``source_path``/``sha256`` stay those of the converted PDF, so the PDF
path (index, links, viewer) is unchanged; for a text source they are the stored text's. A chunk
of a text source records its character offsets in the document's text.

Revision ID: 0003
Revises: 0002
Create Date: 2026-11-29
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("document") as batch:
        batch.add_column(
            sa.Column("source_format", sa.String(16), nullable=False, server_default="pdf")
        )
        batch.add_column(sa.Column("original_name", sa.String(500), nullable=True))
        batch.add_column(sa.Column("original_sha256", sa.String(64), nullable=True))
        batch.add_column(sa.Column("original_path", sa.String(1024), nullable=True))
    with op.batch_alter_table("chunk") as batch:
        batch.add_column(sa.Column("source_start", sa.Integer(), nullable=True))
        batch.add_column(sa.Column("source_end", sa.Integer(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("chunk") as batch:
        batch.drop_column("source_end")
        batch.drop_column("source_start")
    with op.batch_alter_table("document") as batch:
        batch.drop_column("original_path")
        batch.drop_column("original_sha256")
        batch.drop_column("original_name")
        batch.drop_column("source_format")
