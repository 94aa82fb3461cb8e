"""The session: questions to the user, plan mode, resume, forks, the prompt's engine."""
