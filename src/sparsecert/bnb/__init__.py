"""Branch and bound for k-sparse GLMs over the perspective relaxation."""

from sparsecert.bnb.branching import BRANCHING_RULES, choose_branch_variable
from sparsecert.bnb.node import Node
from sparsecert.bnb.queues import QUEUE_STRATEGIES, make_queue
from sparsecert.bnb.results import HistoryRecord, SearchResult
from sparsecert.bnb.search import BnBSettings, BranchAndBound, NodeCallback, ProofSink
from sparsecert.statuses import RELATIVE_GAP_DEFINITION, STATUSES, relative_gap

__all__ = ["BranchAndBound", "BnBSettings", "SearchResult", "HistoryRecord", "Node",
           "NodeCallback", "ProofSink", "make_queue", "choose_branch_variable", "relative_gap",
           "RELATIVE_GAP_DEFINITION", "STATUSES", "QUEUE_STRATEGIES", "BRANCHING_RULES"]
