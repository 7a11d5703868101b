"""The turn engine: the verbs a chat offers (send, retry, edit, continue, stop), the agent
loop that runs a turn, the requests it builds, the estimates shown before sending, the usage
each request leaves, and the sessions, settings and spending a turn works on.

`chat_service` holds the verbs; `agent_loop` runs one turn step by step (`step`, with
`tool_runs`); `request` builds the prompt and parameters; `estimates` answers what the next
request would carry and cost; `turn_records` and `stopped_usage` write the ledger; `changes`
is what a turn changed, carried by its last event (`events`)."""
