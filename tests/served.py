"""`python -S tests/served.py MODULE ARGS`: `python -m MODULE ARGS` run by
the command server of `tests/commands.py`, for a shell script of a test.

It starts in milliseconds (the standard library only, no site), hands the
server its standard streams, working directory and environment, waits,
and ends as the command ended: with its exit code, or by its signal.
"""

import json
import os
import signal
import socket
import sys


def main() -> None:
    module, *args = sys.argv[1:]
    request = {
        "id": 0,
        "module": module,
        "args": args,
        "cwd": os.getcwd(),
        "env": dict(os.environ),
        "new_session": False,
        "rlimits": [],
    }
    with socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET) as server:
        server.connect(os.environ["TRACEGRADE_COMMAND_SERVER"])
        socket.send_fds(server, [json.dumps(request).encode()], [0, 1, 2])
        while True:
            reply = json.loads(server.recv(65536) or b'{"status": 1}')
            if "status" in reply:
                break
    status = reply["status"]
    if status < 0:
        signal.signal(-status, signal.SIG_DFL)
        os.kill(os.getpid(), -status)
    sys.exit(status)


main()
