"""SIGINT/SIGTERM: noted inside training loops (which checkpoint, then stop), at once elsewhere."""

import signal

import pytest

from nfst.errors import Interrupted
from nfst.runtime.interrupt import (
    checkpointed,
    exit_status,
    graceful_interrupts,
    interrupt_requested,
)


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM])
def test_outside_a_training_loop_a_signal_stops_at_once(signum):
    with graceful_interrupts():
        with pytest.raises(KeyboardInterrupt):
            signal.raise_signal(signum)
        assert not interrupt_requested()
    assert exit_status() == 128 + signum  # the shell's convention: 130, 143


def test_in_a_training_loop_the_first_signal_is_noted_and_the_second_stops_at_once():
    before = signal.getsignal(signal.SIGINT)  # SIG_IGN when the suite runs in the background
    with graceful_interrupts():
        with pytest.raises(Interrupted, match="after the last checkpoint"):
            with checkpointed():
                signal.raise_signal(signal.SIGTERM)
                assert interrupt_requested()  # the loop sees it at its next poll
                with pytest.raises(KeyboardInterrupt):
                    signal.raise_signal(signal.SIGINT)
            # leaving the loop with the request unanswered stops the program
    assert not interrupt_requested()
    assert exit_status() == 130  # the last signal's
    assert signal.getsignal(signal.SIGINT) is before


def test_an_error_in_the_loop_is_not_masked():
    with graceful_interrupts():
        with pytest.raises(ValueError):
            with checkpointed():
                signal.raise_signal(signal.SIGTERM)
                raise ValueError("the loop's own error")
