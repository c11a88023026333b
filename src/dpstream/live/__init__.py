"""``dpstream live``: a page on localhost that draws the releases of ``dpstream watch`` as they arrive.

    dpstream watch capture.pcap --follow > releases.jsonl &
    dpstream live releases.jsonl                 # http://127.0.0.1:8765/
    dpstream watch - < capture.pcap | dpstream live - --port 9000

``releases`` follows the JSON lines (a file that grows, or stdin) and checks each against the release format of
``dpstream watch`` (docs/guide/watch.md); ``server`` serves the page (``page.html``: HTML, CSS and JavaScript in one
file, no network access beyond this server) and ``/releases?since=N``, the releases read so far as parsed. The page
shows only what the lines hold: private releases, never anything computed from the packets.
"""

__all__: list[str] = []  # a command, documented as prose (docs/guide/watch.md)
