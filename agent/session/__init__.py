"""The session: what an app or the command line drives. Opens and resumes a log, runs
prompts through the loop, keeps the mode, the plan, the todo list, the questions to
the user and the user's own ! commands.

May import: everything else in agent/ (the top of the engine).
"""
