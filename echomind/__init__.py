"""EchoMind: a local, private engine for chatting with your documents and voice notes.

The package never imports Streamlit; the app in ``app.py`` and ``pages/`` is a thin face over
:class:`echomind.engine.Engine`.
"""

__version__ = "0.1.0"
