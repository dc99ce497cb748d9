"""The learned ranking in the editor: predictions for a version's card fixes (analysis lane, cached per version).

Code actions are ordered and titled with them ("unverified, predicted 1.1-1.4x"), hovers show the chance to verify
and the reasons, and the verification queue runs likely winners first (`warpwise.ranking`). Without a model
(or when the ranking fails) every caller carries on with no prediction.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from warpwise.server.analysis import Analysis

if TYPE_CHECKING:
    from warpwise.server.verification import VerificationService


def predictions(verification: VerificationService, analysis: Analysis) -> dict[tuple[str, str], Any]:
    """Return the prediction per (kernel, card) for the card fixes of one analysed version (without reasons)."""
    from warpwise.ranking import predictions_for

    matches = [i.payload for i in analysis.items if i.source == "card" and i.has_fix and i.payload is not None]
    if not matches:
        return {}
    gpu = verification.gpu
    name = gpu.name if gpu is not None and gpu.found else None
    return predictions_for((analysis.uri, analysis.content_hash), analysis.model, matches, name)


def prediction(verification: VerificationService, analysis: Analysis, kernel: str, card: str) -> Any:
    """Return one card fix's prediction with its reasons (for a hover), or None."""
    from warpwise.ranking import prediction_for

    matches = [i.payload for i in analysis.items if i.source == "card" and i.has_fix and i.payload is not None]
    if not matches:
        return None
    gpu = verification.gpu
    name = gpu.name if gpu is not None and gpu.found else None
    return prediction_for((analysis.uri, analysis.content_hash), analysis.model, matches, (kernel, card), name)


def queue_priority(prediction: Any) -> int:
    """Return the gate queue priority of a candidate with this prediction (0 without one)."""
    from warpwise.ranking import queue_priority as qp

    return qp(prediction)


def editor_priority(prediction: Any) -> tuple[int, float]:
    """Return the key unverified quick fixes are ordered by, higher first (queue priority, then predicted speedup)."""
    from warpwise.ranking import editor_priority as ep

    return ep(prediction)


def hover_line(prediction: Any, gpu: str | None) -> str:
    """Return the hover's prediction paragraph."""
    where = f" on {gpu}" if gpu else ""
    reasons = "; ".join(r.text for r in prediction.reasons)
    return (
        f"**Prediction.** {100 * prediction.p_verified:.0f}% chance to verify; {prediction.label}{where} "
        f"(learned ranking, model {prediction.model_version}). {reasons[:1].upper() + reasons[1:]}."
    )
