"""Rate limits, task quotas, the result size cap and tool-call deadlines, on one fixed-window counter."""
