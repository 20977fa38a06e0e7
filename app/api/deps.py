"""Request dependencies. The session dependency owns the transaction and commits before the
response is sent (scope="function"), so a client never sees 200 for a write that was lost."""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Annotated

from fastapi import Depends, Request
from sqlalchemy.ext.asyncio import AsyncEngine, AsyncSession, async_sessionmaker

from app.core.config import Settings
from app.db.session import transaction
from app.highlights.service import HighlightService


@dataclass(frozen=True)
class AppState:
    settings: Settings
    engine: AsyncEngine
    session_factory: async_sessionmaker[AsyncSession]
    highlights: HighlightService


def get_state(request: Request) -> AppState:
    state: AppState = request.app.state.services
    return state


StateDep = Annotated[AppState, Depends(get_state)]


async def get_session(state: StateDep) -> AsyncIterator[AsyncSession]:
    async with transaction(state.session_factory) as session:
        yield session


SessionDep = Annotated[AsyncSession, Depends(get_session, scope="function")]
