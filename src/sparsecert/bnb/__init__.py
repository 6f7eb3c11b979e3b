"""Branch and bound for k-sparse GLMs over the perspective relaxation."""

from sparsecert.bnb.branching import BRANCHING_RULES, choose_branch_variable
from sparsecert.bnb.node import Node
from sparsecert.bnb.queues import QUEUE_STRATEGIES, make_queue
from sparsecert.bnb.results import RELATIVE_GAP_DEFINITION, SearchResult, relative_gap
from sparsecert.bnb.search import BnBSettings, BranchAndBound

__all__ = ["BranchAndBound", "BnBSettings", "SearchResult", "Node", "make_queue",
           "choose_branch_variable", "relative_gap", "RELATIVE_GAP_DEFINITION",
           "QUEUE_STRATEGIES", "BRANCHING_RULES"]
