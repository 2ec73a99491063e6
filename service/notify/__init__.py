"""Slack notifier: render a group's message (render.py, from view.py), decide what the store calls
for (plan.py: the outbox intents), and deliver them exactly once (deliver.py over slack.py)."""
