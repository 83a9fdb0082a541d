"""The test kit's own promise: a first start whose free port was taken meanwhile draws again.

``free_port()`` returns a port that was free when it looked; another process (or an outgoing
connection's ephemeral port) may take it before the server binds. The kit retries such a first
start on new ports instead of failing a whole module's fixture.
"""

from __future__ import annotations

import socket
from pathlib import Path

from tests.kit.process import running
from tests.kit.standalone import StandaloneProcess


def test_a_taken_port_on_first_start_is_drawn_again(tmp_path: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        standalone = StandaloneProcess(data_dir=tmp_path / "data", web_port=port)
        with running(standalone):
            assert standalone.web_port != port
            assert "address already in use" in standalone.log_text().lower()
