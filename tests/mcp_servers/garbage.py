"""A "server" that answers every line it is sent with a line that is not JSON-RPC."""

import sys

for _line in sys.stdin:
    sys.stdout.write("<html>502 Bad Gateway</html>\n")
    sys.stdout.flush()
