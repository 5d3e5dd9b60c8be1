#!/usr/bin/env python3
"""Starts and stops a local moto server (the pinned moto[server] in .cache/venv) for CTest fixtures.

  moto_fixture.py up   --dir DIR --moto-server PATH [--env KEY=VALUE ...]
  moto_fixture.py down --dir DIR

`up` picks a free loopback port, starts moto_server detached (its log in DIR/moto.log), waits until
it answers, and writes DIR/endpoint (http://127.0.0.1:PORT) and DIR/pid. `down` stops that process
(SIGTERM, then SIGKILL) and is a no-op when nothing runs. Nothing is seeded: tests create what
they need through the AWS APIs.
"""
import argparse
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request


def free_port():
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def down(directory):
    pid_file = os.path.join(directory, "pid")
    if not os.path.exists(pid_file):
        return 0
    with open(pid_file) as f:
        pid = int(f.read().strip())
    try:
        os.killpg(pid, signal.SIGTERM)
        for _ in range(50):
            os.killpg(pid, 0)
            time.sleep(0.1)
        os.killpg(pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    os.remove(pid_file)
    return 0


def up(directory, moto_server, env_pairs):
    os.makedirs(directory, exist_ok=True)
    down(directory)
    if not os.access(moto_server, os.X_OK):
        print(f"moto_fixture: {moto_server} not found; run scripts/install-deps", file=sys.stderr)
        return 1
    env = dict(os.environ)
    for pair in env_pairs:
        key, _, value = pair.partition("=")
        env[key] = value
    for attempt in range(3):
        port = free_port()
        log = open(os.path.join(directory, "moto.log"), "ab")
        proc = subprocess.Popen([moto_server, "-H", "127.0.0.1", "-p", str(port)], stdout=log,
                                stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, env=env,
                                start_new_session=True)
        endpoint = f"http://127.0.0.1:{port}"
        deadline = time.time() + 60
        while time.time() < deadline and proc.poll() is None:
            try:
                urllib.request.urlopen(endpoint + "/moto-api/", timeout=2).read()
                with open(os.path.join(directory, "pid"), "w") as f:
                    f.write(str(proc.pid))
                with open(os.path.join(directory, "endpoint"), "w") as f:
                    f.write(endpoint)
                print(f"moto_fixture: moto at {endpoint} (pid {proc.pid})")
                return 0
            except OSError:
                time.sleep(0.2)
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
        print(f"moto_fixture: attempt {attempt + 1} on port {port} failed", file=sys.stderr)
    return 1


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("command", choices=["up", "down"])
    parser.add_argument("--dir", required=True)
    parser.add_argument("--moto-server")
    parser.add_argument("--env", action="append", default=[])
    args = parser.parse_args()
    if args.command == "up":
        return up(args.dir, args.moto_server, args.env)
    return down(args.dir)


if __name__ == "__main__":
    sys.exit(main())
