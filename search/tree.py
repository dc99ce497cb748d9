"""The search tree and three strategies over it: Monte-Carlo tree search (UCT), greedy, and random order.

A node is a kernel version; its edges are actions (card rewrites, parameter choices, lineage steps, LLM edits).
A node is evaluated once, by the gate, when it is created: there is no cheap rollout for a kernel, so the
"simulation" of MCTS is the measurement itself, and its reward (`warpwise.search.reward`) is backed up the path.

**MCTS.** Each iteration walks down from the root. At a node that may still grow, the untried action with the
highest prior is expanded, its version evaluated, and the reward backed up; otherwise the child with the highest
UCT score is taken,

    UCT(child) = mean(child) + c * sqrt(ln N(parent) / N(child)),

with the exploration constant `c = EXPLORATION = 0.5`. Rewards lie in [-1, 1] (share of the start's time
saved; failures -1); with c = 0.5 a child tried once behind a sibling tried ten times under a parent of 20
visits gets a bonus of about 0.87 against 0.27, enough to revisit it when the sibling's gain is under ~60%, while
measured differences of a few percent still decide among well-visited children. A node may grow only while it
has fewer than `ceil(WIDENING_K * N ** WIDENING_ALPHA)` children (progressive widening, k = 2, alpha = 0.5), or
when all its children are exhausted, so a wide node does not absorb the whole budget before the search goes deep;
priors decide which action comes next. Failed candidates are terminal; a subtree with nothing left to try is
exhausted and never selected again. Children that repeat a version already in the tree are skipped (and listed).

**Greedy** evaluates every action of the current node (in prior order), moves to the child with the highest
verified speedup, and repeats; it stops when no child is verified faster than its parent.
**Random** picks a node uniformly among those with untried actions, and one of its untried actions uniformly.

All three stop when the budget is spent, the search is cancelled, or nothing is left to try.
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable
from dataclasses import dataclass, field

from warpwise.search.actions import Action, ActionKind, ActionSource
from warpwise.search.context import SearchContext
from warpwise.search.evaluate import Evaluation, Evaluator
from warpwise.search.reward import Reward, measured_faster, reward_of, screening_reward
from warpwise.search.version import Version
from warpwise.verify.types import Status

EXPLORATION = 0.5
WIDENING_K = 2.0
WIDENING_ALPHA = 0.5
MAX_DEPTH = 6

Screen = Callable[[Version, Action], str | None]
"""A static check of a produced version before it goes to the gate: None to pass, or why it is refused."""


@dataclass
class Rejected:
    """An action that did not become an evaluated node: why, and the node it was tried from."""

    action: Action
    parent: int
    reason: str


@dataclass(eq=False)
class Node:
    """One kernel version in the tree, with its gate result and visit statistics."""

    version: Version
    parent: Node | None = None
    action: Action | None = None
    depth: int = 0
    id: int = 0
    evaluation: Evaluation | None = None
    reward: Reward | None = None
    visits: int = 0
    total: float = 0.0
    children: list[Node] = field(default_factory=list)
    untried: list[Action] | None = None
    exhausted: bool = False
    judge: dict[str, str] | None = None
    screening: Evaluation | None = None
    """The screening result on a reduced problem, once `evaluation` holds the confirmation at the user's size."""

    @property
    def mean(self) -> float:
        """Return the mean reward backed up through this node."""
        return self.total / self.visits if self.visits else 0.0

    @property
    def status(self) -> Status | None:
        """Return the gate's status of this version."""
        return self.evaluation.result.status if self.evaluation is not None else None

    @property
    def terminal(self) -> bool:
        """Return whether nothing may be expanded below this node (a failed candidate)."""
        return self.reward is not None and self.reward.terminal

    @property
    def speedup(self) -> float | None:
        """Return the median speedup over the start, when measured."""
        if self.evaluation is None or self.evaluation.result.speedup is None:
            return None
        return self.evaluation.result.speedup.median

    @property
    def screened(self) -> bool:
        """Return whether this version's result comes from a reduced problem only (not yet confirmed)."""
        return self.evaluation is not None and self.evaluation.screened

    @property
    def verified(self) -> bool:
        """Return whether the gate verified this version faster than the start, at the user's size."""
        return self.status is Status.VERIFIED and not self.screened

    @property
    def faster(self) -> bool:
        """Return whether the gate measured this version faster than the start (verified, or faster when screened)."""
        if self.evaluation is not None and self.evaluation.screened:
            return measured_faster(self.evaluation.result)
        return self.status is Status.VERIFIED

    def path(self) -> list[Node]:
        """Return the nodes from the root to this one."""
        out = []
        node: Node | None = self
        while node is not None:
            out.append(node)
            node = node.parent
        return out[::-1]

    def via(self, kind: ActionKind) -> bool:
        """Return whether an action of this kind lies on the path to this node."""
        return any(n.action is not None and n.action.kind is kind for n in self.path())


@dataclass(frozen=True, slots=True)
class Progress:
    """Where a search stands: nodes evaluated, the best verified speedup so far, GPU-seconds charged."""

    nodes: int
    candidates: int
    best_speedup: float | None
    gpu_seconds: float
    last: str


class Search:
    """The tree, its expansion and bookkeeping; strategies override `step`."""

    name = "base"

    def __init__(
        self,
        evaluator: Evaluator,
        ctx: SearchContext,
        sources: list[ActionSource],
        *,
        seed: int = 0,
        max_depth: int = MAX_DEPTH,
        screen: Screen | None = None,
        progress: Callable[[Progress], None] | None = None,
    ) -> None:
        self.evaluator = evaluator
        self.ctx = ctx
        self.sources = sources
        self.rng = random.Random(seed)
        self.max_depth = max_depth
        self.screen = screen
        self.progress = progress
        self.nodes: list[Node] = []
        self.by_key: dict[str, Node] = {}
        self.rejected: list[Rejected] = []
        self.trajectory: list[tuple[float, float]] = []
        self.stop_reason = ""
        self.root = Node(evaluator.start)

    # -- bookkeeping ---------------------------------------------------------------------------------------------

    def best(self) -> Node | None:
        """Return the verified node with the highest median speedup (the shallower one on ties)."""
        verified = [n for n in self.nodes if n.verified and n.speedup is not None]
        if not verified:
            return None
        return max(verified, key=lambda n: (n.speedup or 0.0, -n.depth, -n.id))

    def ranked(self) -> list[Node]:
        """Return the verified nodes, best first."""
        verified = [n for n in self.nodes if n.verified and n.speedup is not None]
        return sorted(verified, key=lambda n: (-(n.speedup or 0.0), n.depth, n.id))

    def _report(self, last: str) -> None:
        best = self.best()
        speed = best.speedup if best is not None else None
        budget = self.evaluator.budget
        self.trajectory.append((budget.spent_s, speed or 1.0))
        if self.progress is not None:
            self.progress(Progress(len(self.nodes), budget.charged, speed, budget.spent_s, last))

    def _actions(self, node: Node) -> list[Action]:
        """List a node's actions from every source, highest prior first (ties by name, for determinism)."""
        if node.depth >= self.max_depth or node.terminal:
            return []
        found: dict[str, Action] = {}
        for source in self.sources:
            for a in source.actions(node.version, self.ctx):
                found.setdefault(a.name, a)
        return sorted(found.values(), key=lambda a: (-a.prior, a.name))

    def _untried(self, node: Node) -> list[Action]:
        if node.untried is None:
            node.untried = self._actions(node)
        return node.untried

    def _stopped(self) -> bool:
        if self.evaluator.cancel.is_set():
            self.stop_reason = "cancelled"
            return True
        why = self.evaluator.budget.exhausted()
        if why is not None:
            self.stop_reason = why
            return True
        return False

    def _evaluate(self, node: Node) -> bool:
        """Evaluate a node's version; return False when the search must stop (cancelled or refused)."""
        ev = self.evaluator.evaluate(node.version)
        if ev is None:
            self.stop_reason = self.stop_reason or (
                "cancelled" if self.evaluator.cancel.is_set() else "the verifier refused the job"
            )
            return False
        node.evaluation = ev
        node.reward = reward_of(ev.result)
        if ev.screened:
            r = screening_reward(ev.result)
            why = r.reason.replace("verified", "faster")
            node.reward = Reward(r.value, r.terminal, r.gain, f"screened on a reduced problem: {why}")
        node.id = len(self.nodes)
        node.visits = 1
        node.total = node.reward.value
        self.nodes.append(node)
        self.by_key[node.version.key] = node
        if node.terminal:
            node.exhausted = True
        title = node.action.title if node.action is not None else "starting kernel"
        self._report(f"{title}: {node.reward.reason}")
        return True

    def start(self) -> bool:
        """Evaluate the root (the start against itself: checks the spec and measures the A/A noise)."""
        if not self._evaluate(self.root):
            return False
        root = self.root.evaluation
        assert root is not None
        if root.result.status not in (Status.NOT_FASTER, Status.VERIFIED, Status.NO_GPU):
            self.stop_reason = f"the starting kernel did not pass the gate: {root.result.status.value}"
            return False
        return True

    def expand(self, node: Node) -> Node | None:
        """Create and evaluate the child of a node's best untried action; None when none could be evaluated."""
        untried = self._untried(node)
        while untried:
            if self._stopped():
                return None
            action = untried.pop(0)
            child = self._make_child(node, action)
            if child is None:
                continue
            if not self._evaluate(child):
                untried.insert(0, action)
                return None
            node.children.append(child)
            return child
        return None

    def _make_child(self, node: Node, action: Action) -> Node | None:
        """Produce an action's version; record why when it is not worth evaluating."""
        try:
            version = action.produce()
        except Exception as exc:  # An action that fails to produce (an LLM request, a rewrite) is a rejection.
            self.rejected.append(Rejected(action, node.id, f"failed to produce a version: {type(exc).__name__}: {exc}"))
            return None
        if version is None:
            self.rejected.append(Rejected(action, node.id, "produced no version"))
            return None
        same = self.by_key.get(version.key)
        if same is not None:
            self.rejected.append(Rejected(action, node.id, f"same version as node {same.id}"))
            return None
        if self.screen is not None:
            why = self.screen(version, action)
            if why is not None:
                self.rejected.append(Rejected(action, node.id, f"guardrail: {why}"))
                return None
        return Node(version, node, action, node.depth + 1)

    def _update_exhausted(self, path: list[Node]) -> None:
        for n in reversed(path):
            if n.terminal or (n.untried is not None and not n.untried and all(c.exhausted for c in n.children)):
                n.exhausted = True
            else:
                break

    def run(self) -> Node | None:
        """Run the strategy until the budget is spent, it is cancelled, or nothing is left; return the best node."""
        if not self.start():
            return None
        while not self._stopped():
            if not self.step():
                break
        if not self.stop_reason:
            self.stop_reason = "nothing left to try"
        return self.best()

    def step(self) -> bool:
        """Do one unit of work; return False when the strategy has nothing left to do."""
        raise NotImplementedError


class MCTS(Search):
    """Monte-Carlo tree search with UCT selection, prior-ordered expansion and progressive widening."""

    name = "mcts"

    def __init__(self, *args: object, exploration: float = EXPLORATION, **kwargs: object) -> None:
        super().__init__(*args, **kwargs)  # type: ignore[arg-type]
        self.exploration = exploration

    def uct(self, parent: Node, child: Node) -> float:
        """Return a child's UCT score."""
        return child.mean + self.exploration * math.sqrt(math.log(max(parent.visits, 1)) / max(child.visits, 1))

    def may_grow(self, node: Node) -> bool:
        """Return whether a node may get another child now (progressive widening)."""
        if not self._untried(node):
            return False
        live = [c for c in node.children if not c.exhausted]
        return not live or len(node.children) < math.ceil(WIDENING_K * max(node.visits, 1) ** WIDENING_ALPHA)

    def step(self) -> bool:
        """Select, expand, evaluate and back up once."""
        if self.root.exhausted:
            return False
        node = self.root
        path = [node]
        leaf: Node | None = None
        while True:
            if node.terminal:
                break
            if self.may_grow(node):
                leaf = self.expand(node)
                if leaf is not None:
                    path.append(leaf)
                    break
                if self.stop_reason:
                    return False
                continue
            live = [c for c in node.children if not c.exhausted]
            if not live:
                break
            node = max(live, key=lambda c: (self.uct(node, c), -c.id))
            path.append(node)
        if leaf is not None and leaf.reward is not None:
            for n in path[:-1]:
                n.visits += 1
                n.total += leaf.reward.value
        self._update_exhausted(path)
        return True


class Greedy(Search):
    """Evaluate every action of the current node, move to the best verified child, repeat."""

    name = "greedy"

    def __init__(self, *args: object, **kwargs: object) -> None:
        super().__init__(*args, **kwargs)  # type: ignore[arg-type]
        self.current: Node | None = None

    def step(self) -> bool:
        """Evaluate the next action of the current node, or move on when it has none left."""
        if self.current is None:
            self.current = self.root
        node = self.current
        if self._untried(node):
            child = self.expand(node)
            return child is not None or not self.stop_reason
        here = 1.0 if node is self.root else (node.speedup or 1.0)
        better = [c for c in node.children if c.faster and (c.speedup or 0.0) > here]
        if not better or node.depth + 1 >= self.max_depth:
            return False
        self.current = max(better, key=lambda c: (c.speedup or 0.0, -c.id))
        return True


class RandomOrder(Search):
    """Pick a node with untried actions uniformly, then one of its untried actions uniformly."""

    name = "random"

    def _untried(self, node: Node) -> list[Action]:
        if node.untried is None:
            node.untried = self._actions(node)
            self.rng.shuffle(node.untried)
        return node.untried

    def step(self) -> bool:
        """Evaluate one random action of one random node."""
        open_nodes = [n for n in self.nodes if not n.terminal and (n.untried is None or n.untried)]
        while open_nodes:
            node = self.rng.choice(open_nodes)
            if not self._untried(node):
                open_nodes.remove(node)
                continue
            child = self.expand(node)
            return child is not None or not self.stop_reason
        return False


STRATEGIES: dict[str, type[Search]] = {"mcts": MCTS, "greedy": Greedy, "random": RandomOrder}
