"""What the window does: each controller turns widget gestures into service calls and
redraws from what the services return."""
