"""The only part of the package that imports Streamlit: shared state, the sidebar knobs and widgets."""
