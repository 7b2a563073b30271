"""The agent's client terminals (terminal/*): commands run behind reapers, bounded output, shown
live in the conversation."""
