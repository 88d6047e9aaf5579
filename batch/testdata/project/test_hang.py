import signal
import time


def test_hang_ignoring_sigint():
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    while True:
        time.sleep(0.05)
