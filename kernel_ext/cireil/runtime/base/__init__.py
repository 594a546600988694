"""The ground floor: errors, the runtime's event loop, parameter models and small helpers. Imports nothing of cireil."""
