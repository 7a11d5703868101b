"""The turn engine: the verbs a chat offers (send, retry, edit, continue, stop), the agent
loop that runs a turn, the requests it builds, the estimates shown before sending, the usage
each request leaves, and the sessions, settings and spending a turn works on."""
