"""Scoring: `evaluation.compute` (images or scene graphs + specs -> verdicts and scores), the scores and
breakdowns (`scores`), the probabilistic score, meta-evaluation against human verdicts, baseline metrics and
the publication of the evaluate metric."""
