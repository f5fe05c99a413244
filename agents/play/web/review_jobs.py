"""The browser game's reviews (``agents.play.review``) computed in the background, their progress followed by the page.

A review of a hand (or of a whole match) takes seconds (every legal move of each of the person's decisions valued
over sampled deals), too long for a request: ``ReviewService.submit`` runs it in its own worker thread (apart from
the game work's threads, so moves are never queued behind a review) and returns a ``ReviewJob`` whose ``status`` the
page asks for again until it is ``done``. At most ``MAX_REVIEWS`` reviews are queued or running at once on a server
(``ReviewsBusy`` beyond, which the API answers with 503), and ``close`` stops the running one at its next decision.
What is reviewed, and that it reveals nothing during play, is ``WebGame.review``'s business.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from agents.errors import ScopaError

__all__ = ["MAX_REVIEWS", "REVIEW_THREADS", "ReviewJob", "ReviewService", "ReviewsBusy"]

REVIEW_THREADS = 1
"""Reviews computed at once (each is CPU work in one thread; the others wait their turn)."""
MAX_REVIEWS = 16
"""Reviews queued or running at once on one server; a new one beyond is refused until some end."""

Progress = Callable[[int, int], None]
"""``progress(done, total)``: called by a review after each decision."""


class ReviewsBusy(ScopaError, RuntimeError):
    """The server already has ``MAX_REVIEWS`` reviews to compute; ask again later."""


class ReviewStopped(Exception):
    """Raised inside a running review when the server stops."""


@dataclass
class ReviewJob:
    """One review being computed: its state (``queued``, ``running``, ``done``, ``failed``), its progress in
    decisions, and its result (or the reason it failed)."""

    state: str = "queued"
    done: int = 0
    total: int = 0
    result: dict[str, Any] | None = None
    error: str | None = None
    info: dict[str, Any] = field(default_factory=dict)
    """What the job reviews (``scope``, ``hand``), repeated in its status."""

    def status(self) -> dict[str, Any]:
        """The job for the page: state, progress, and the review once done (or the error once failed)."""
        out: dict[str, Any] = {**self.info, "state": self.state, "done": self.done, "total": self.total}
        if self.state == "done":
            out["review"] = self.result
        elif self.state == "failed":
            out["error"] = self.error
        return out


class ReviewService:
    """The server's review worker: ``submit`` a review, ``close`` at shutdown."""

    def __init__(self, threads: int = REVIEW_THREADS, max_reviews: int = MAX_REVIEWS) -> None:
        self.pool = ThreadPoolExecutor(max_workers=threads, thread_name_prefix="scopa-web-review")
        self.max_reviews = max_reviews
        self._open = 0
        self._lock = threading.Lock()
        self._stopping = threading.Event()

    def submit(self, work: Callable[[Progress], dict[str, Any]], info: dict[str, Any]) -> ReviewJob:
        """Start ``work(progress)`` in the background; its job at once. ``ReviewsBusy`` when the server already has
        ``max_reviews`` reviews queued or running."""
        with self._lock:
            if self._open >= self.max_reviews or self._stopping.is_set():
                raise ReviewsBusy(
                    f"the server is computing {self._open} reviews already; ask again in a minute"
                    if not self._stopping.is_set()
                    else "the server is stopping"
                )
            self._open += 1
        job = ReviewJob(info=dict(info))

        def progress(done: int, total: int) -> None:
            if self._stopping.is_set():
                raise ReviewStopped
            job.done, job.total = done, total

        def run() -> None:
            job.state = "running"
            try:
                job.result = work(progress)
                job.state = "done"
            except ReviewStopped:
                job.error, job.state = "the server is stopping", "failed"
            except Exception as e:  # a review that fails says why on the page; the server keeps serving
                job.error, job.state = f"{type(e).__name__}: {e}", "failed"
            finally:
                with self._lock:
                    self._open -= 1

        self.pool.submit(run)
        return job

    def close(self) -> None:
        """Stop: queued reviews never start, a running one stops at its next decision."""
        self._stopping.set()
        self.pool.shutdown(wait=True, cancel_futures=True)
