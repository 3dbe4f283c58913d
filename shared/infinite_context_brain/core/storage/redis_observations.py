"""The Redis observation part: one hash per session, ``<prefix>:{<session>}:observations``,
field = Claude Code's tool_use_id, value = the observation as JSON."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..models import Observation
from .redis_conn import RedisConnection, text
from .states import parse_observation

if TYPE_CHECKING:
    from redis.typing import EncodableT, FieldT


class RedisObservations:
    def __init__(self, conn: RedisConnection) -> None:
        self.conn = conn

    def _key(self, session_id: str) -> str:
        return self.conn.key(session_id, "observations")

    def put_observations(self, session_id: str, observations: list[Observation]) -> None:
        mapping: dict[FieldT, EncodableT] = {o.tool_use_id: o.model_dump_json() for o in observations}
        if mapping:
            self.conn.guard(lambda: self.conn.client.hset(self._key(session_id), mapping=mapping))

    def put_observation(self, session_id: str, observation: Observation) -> None:
        self.put_observations(session_id, [observation])

    def get_observations(self, session_id: str, tool_use_ids: list[str]) -> dict[str, Observation]:
        if not tool_use_ids:
            return {}
        values = self.conn.guard(lambda: self.conn.client.hmget(self._key(session_id), tool_use_ids))
        found: dict[str, Observation] = {}
        for tool_use_id, raw in zip(tool_use_ids, values, strict=True):
            parsed = parse_observation(raw) if raw is not None else None
            if parsed is not None:
                found[tool_use_id] = parsed
        return found

    def all_observations(self, session_id: str) -> dict[str, Observation]:
        raw = self.conn.guard(lambda: self.conn.client.hgetall(self._key(session_id)))
        found: dict[str, Observation] = {}
        for field, value in raw.items():
            parsed = parse_observation(value)
            if parsed is not None:
                found[text(field)] = parsed
        return found

    def observation_sessions(self) -> list[str]:
        return self.conn.sessions_with("observations")
