"""`memex web`: a local viewer of every session, built on the `Memex` face only.

`app.py` holds the pages (each parses its request, calls one `Memex` method and renders a Jinja2
template, autoescaped), `guard.py` who may ask (loopback hosts, or the API token when served remotely,
and the form secret of the one write, forget), `server.py` serves them with uvicorn from a thread.
"""
