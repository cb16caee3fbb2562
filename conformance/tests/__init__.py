"""The suite's tests, one package per rule family; the whole contract at once (the state
machine, the scenario replays) at the top. The harness (client, model, machine, reports,
options) is the package above."""
