"""Throwaway `redis-server` processes on free loopback ports, stopped by PID.

Used by the fixtures in conftest.py: a standalone server (optionally with AOF, for restart
tests) and a 3-node cluster built with `redis-cli --cluster create`.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

import pytest


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _is_free(port: int) -> bool:
    with socket.socket() as s:
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def free_cluster_port() -> int:
    """A port whose cluster bus twin (port + 10000) is free and below 65536."""
    import random

    for _ in range(200):
        port = random.randint(20000, 45000)
        if _is_free(port) and _is_free(port + 10000):
            return port
    raise RuntimeError("no free port pair for a cluster node")


def redis_binary() -> str:
    found = shutil.which("redis-server")
    if found:
        return found
    if os.environ.get("CI"):
        pytest.fail("redis-server missing: .ci/run installs it with apt")
    pytest.skip("redis-server not installed (apt-get install redis-server)")


@dataclass
class RedisServer:
    port: int
    workdir: Path
    extra: list[str] = field(default_factory=list)
    proc: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> None:
        self.workdir.mkdir(parents=True, exist_ok=True)
        self.proc = subprocess.Popen(
            [
                redis_binary(),
                "--port",
                str(self.port),
                "--bind",
                "127.0.0.1",
                "--dir",
                str(self.workdir),
                "--save",
                "",
                "--daemonize",
                "no",
                *self.extra,
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        wait_for_port(self.port)

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            os.kill(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                os.kill(self.proc.pid, signal.SIGKILL)
                self.proc.wait()
        self.proc = None

    def restart(self) -> None:
        self.stop()
        self.start()


def wait_for_port(port: int, timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.2) as conn:
                conn.sendall(b"PING\r\n")
                if conn.recv(64).startswith((b"+PONG", b"-NOAUTH")):  # up (maybe with a password)
                    return
        except OSError:
            pass
        time.sleep(0.05)
    raise RuntimeError(f"redis-server on port {port} did not start")


@dataclass
class RedisCluster:
    nodes: list[RedisServer]

    @property
    def url(self) -> str:
        return f"redis+cluster://127.0.0.1:{self.nodes[0].port}"

    def stop(self) -> None:
        for node in self.nodes:
            node.stop()


def start_cluster(workdir: Path, size: int = 3) -> RedisCluster:
    nodes = []
    for i in range(size):
        port = free_cluster_port()
        node = RedisServer(
            port,
            workdir / f"node{i}",
            ["--cluster-enabled", "yes", "--cluster-config-file", f"nodes-{port}.conf", "--appendonly", "no"],
        )
        node.start()
        nodes.append(node)
    cli = shutil.which("redis-cli") or "redis-cli"
    subprocess.run(
        [
            cli,
            "--cluster",
            "create",
            *[f"127.0.0.1:{n.port}" for n in nodes],
            "--cluster-replicas",
            "0",
            "--cluster-yes",
        ],
        check=True,
        capture_output=True,
        timeout=60,
    )
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        out = subprocess.run(
            [cli, "-p", str(nodes[0].port), "cluster", "info"], capture_output=True, text=True
        )
        if "cluster_state:ok" in out.stdout:
            return RedisCluster(nodes)
        time.sleep(0.2)
    raise RuntimeError("the local Redis cluster did not become ready")
