"""The events each request leaves: what `flotilla events`, history, the dashboard, the metrics
and the daily budget read."""

HTTP_REQUESTED = "http.requested"
"""A request went out: method, url (as the agent wrote it: handles, never values), host, status
(null when no answer came), bytes, duration_s, ok, detail, and `sent`, the requests it took
(one, plus each redirect followed), counted in the budget."""

HTTP_REFUSED = "http.refused"
"""A request refused by the policy: method, url, host, rule, and `sent`, the requests that went
out before a redirect was refused (counted in the budget)."""
