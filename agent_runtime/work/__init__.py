"""Working one inbox item: the prompt, the tool-calling loop, the context manager that keeps
requests inside the model's window, and the model client."""
