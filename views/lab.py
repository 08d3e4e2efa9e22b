"""Retrieval lab: test sets of questions with what should be found, runs with the current knobs,
per-question hits and misses, runs compared, one knob swept into a chart, answers scored against gold
answers, import and export."""

import pandas as pd
import streamlit as st

from echomind.errors import EchoMindError
from echomind.lab import METRICS, SWEEPS, Lab, describe_settings
from echomind.lab_answers import ANSWER_METRICS
from echomind.ui.state import get_engine

engine = get_engine()
lab = engine.lab
settings = st.session_state["retrieval_settings"]

# -- the test set everything below works on --------------------------------------------------------
with st.session_state.get("sidebar_top", st.sidebar):
    st.subheader("Test sets")
    sets = lab.sets()
    names = {s["id"]: f"{s['name']} ({s['questions']} q, {s['runs']} runs)" for s in sets}
    if sets:
        current = st.session_state.get("lab_set")
        current = current if current in names else sets[0]["id"]
        current = st.selectbox("Test set", list(names), index=list(names).index(current), format_func=names.get, label_visibility="collapsed")
        st.session_state["lab_set"] = current
        if st.button("Delete this test set", help="Its questions and runs go with it; the documents stay."):
            lab.delete_set(current)
            st.session_state.pop("lab_set", None)
            st.rerun()
    with st.form("new-set", border=False, clear_on_submit=True):
        new_name = st.text_input("New test set")
        if st.form_submit_button("Create") and new_name.strip():
            st.session_state["lab_set"] = lab.create_set(new_name)
            st.rerun()

st.title("Retrieval lab")
with st.container():  # always there, so the tabs below keep their place (and the open tab) across reruns
    if flash := st.session_state.pop("lab_flash", None):
        st.success(flash)
st.caption("Measure retrieval on your own documents: questions with the chunks or documents that answer them, run with the "
           "knobs in the sidebar. Add questions here, from the Chat inspector (✓ answers it), or import a BEIR set.")
set_id = st.session_state.get("lab_set") if sets else None
tabs = st.tabs(["Questions", "Run", "Compare", "Sweep", "Answers", "Import / export"])


def metric_row(metrics: dict) -> None:
    cols = st.columns(len(METRICS) + 2)
    for col, name in zip(cols, METRICS):
        col.metric(name.replace("Recall@k", f"Recall@{metrics.get('k', 'k')} in context"), f"{metrics.get(name, 0):.3f}")
    cols[-2].metric("p50 ms", f"{metrics.get('p50_ms', 0):.0f}")
    cols[-1].metric("p95 ms", f"{metrics.get('p95_ms', 0):.0f}")


class ProgressBar:
    """A progress bar for a long Lab step that disappears when the step is done."""

    def __init__(self, text: str):
        self.text, self.bar = text, st.progress(0.0, text=text)

    def __call__(self, label: str, fraction: float) -> None:
        self.bar.progress(min(1.0, fraction), text=f"{self.text}: {label[:80]}")

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        self.bar.empty()


def key_label(key: str, labels: dict) -> str:
    return Lab.label(labels.get(key) or lab.describe(key), key)


# -- questions --------------------------------------------------------------------------------------
with tabs[0]:
    if set_id is None:
        st.info("Create a test set in the sidebar, or import one under Import / export.")
    else:
        rows = lab.question_rows(set_id)
        if rows:
            table = pd.DataFrame([{"qid": r["qid"], "question": r["question"],
                                   "should find": " | ".join(key_label(k, r["labels"]) for k in r["expected"]),
                                   "gold answers": "(unanswerable)" if r["unanswerable"] else " | ".join(r["answers"])} for r in rows])
            st.dataframe(table, hide_index=True, width="stretch")
            remove = st.multiselect("Remove questions", [r["qid"] for r in rows],
                                    format_func=lambda q: next(r["question"][:80] for r in rows if r["qid"] == q))
            if st.button("Remove selected", disabled=not remove):
                for qid in remove:
                    lab.remove_question(set_id, qid)
                st.rerun()
        else:
            st.info("No questions yet.")
        st.subheader("Add a question")
        question = st.text_input("Question", key="lab_question")
        if st.button("Find candidate chunks", disabled=not question.strip()):
            st.session_state["lab_candidates"] = [(h.chunk_id, f"{h.source.get('filename')} · chunk {h.source.get('chunk_index')}: "
                                                   f"{' '.join(h.text.split())[:160]}") for h in engine.retrieve(question, settings.replace(top_k=8)).hits]
        picked = [cid for cid, text in st.session_state.get("lab_candidates", []) if st.checkbox(text, key=f"cand-{cid}")]
        docs = {d["id"]: d["filename"] for d in engine.documents()}
        picked_docs = st.multiselect("…or whole documents that answer it", list(docs), format_func=docs.get)
        if st.button("Add question", type="primary", disabled=not (question.strip() and (picked or picked_docs))):
            lab.add_question(set_id, question, {f"chunk:{c}": 1 for c in picked} | {f"doc:{d}": 1 for d in picked_docs})
            st.session_state.pop("lab_candidates", None)
            st.rerun()

# -- run --------------------------------------------------------------------------------------------
with tabs[1]:
    if set_id is not None:
        st.caption(f"Current knobs: {describe_settings(settings)}")
        if st.button("Run with current knobs", type="primary"):
            try:
                with ProgressBar("Running") as progress:
                    run = lab.run(set_id, settings, progress=progress)
                st.session_state["lab_run"] = run["id"]
                st.rerun()  # every tab (and the sidebar's counts) shows the new run
            except EchoMindError as exc:
                st.error(str(exc))
        runs = lab.runs(set_id)
        if runs:
            st.subheader("Runs")
            st.dataframe(pd.DataFrame([{"run": r["id"], "when": r["created_at"][:19].replace("T", " "), "settings": r["label"],
                                        **{m: round(r["metrics"].get(m, 0), 4) for m in METRICS},
                                        "p50 ms": round(r["metrics"].get("p50_ms", 0)), "p95 ms": round(r["metrics"].get("p95_ms", 0))} for r in runs]),
                         hide_index=True, width="stretch")
            labels = {r["id"]: f"#{r['id']} · {r['label'][:60]}" for r in runs}
            chosen = st.session_state.get("lab_run")
            chosen = chosen if chosen in labels else runs[-1]["id"]
            run_id = st.selectbox("Run to inspect", list(labels), index=list(labels).index(chosen), format_func=labels.get)
            run = lab.get_run(run_id)
            metric_row(run["metrics"])
            st.subheader("Per question")
            question_labels = {q["qid"]: q["labels"] for q in lab.question_rows(set_id)}
            per = []
            for q in run["questions"]:
                ranks = q["expected"]
                found = [r for r in ranks.values() if r]
                per.append({"question": q["question"], "hit": "✓" if found else "✗", "first rank": min(found) if found else None,
                            "in context": f"{len(q['in_context'])}/{len(ranks)}",
                            "expected (rank)": " | ".join(f"{key_label(k, question_labels.get(q['qid'], {}))} ({r or 'not found'})" for k, r in ranks.items()),
                            "outranked by": " | ".join(key_label(k, q.get("labels", {})) for k in q["outranked_by"][:3]),
                            "nDCG@10": round(q["nDCG@10"], 3), "ms": round(q["latency_ms"])})
            st.dataframe(pd.DataFrame(per), hide_index=True, width="stretch")

# -- compare ----------------------------------------------------------------------------------------
with tabs[2]:
    runs = lab.runs(set_id) if set_id else []
    if len(runs) < 2:
        st.info("Two runs are needed: change a knob in the sidebar and run again.")
    else:
        labels = {r["id"]: f"#{r['id']} · {r['label'][:60]}" for r in runs}
        cols = st.columns(2)
        a = cols[0].selectbox("Run A", list(labels), index=len(runs) - 2, format_func=labels.get)
        b = cols[1].selectbox("Run B", list(labels), index=len(runs) - 1, format_func=labels.get)
        diff = lab.compare(a, b)
        st.dataframe(pd.DataFrame(diff["metrics"]).round(4), hide_index=True, width="stretch")
        st.markdown("**Knobs that differ**")
        st.dataframe(pd.DataFrame(diff["settings"]).astype(str) if diff["settings"] else pd.DataFrame([{"knob": "none"}]), hide_index=True)
        st.markdown(f"**Questions whose first hit moved** ({len(diff['moved'])})")
        if diff["moved"]:
            st.dataframe(pd.DataFrame(diff["moved"]), hide_index=True, width="stretch")

# -- sweep ------------------------------------------------------------------------------------------
with tabs[3]:
    if set_id is not None:
        knob = st.selectbox("Knob", list(SWEEPS), format_func=lambda k: SWEEPS[k][0])
        values_text = st.text_input("Values (comma-separated)", value=", ".join(str(v) for v in SWEEPS[knob][1]), key=f"sweep-values-{knob}")
        st.caption("Every other knob stays as set in the sidebar. Each value is a saved run.")
        if st.button("Run sweep", type="primary"):
            try:
                values = [v.strip() for v in values_text.split(",") if v.strip()]
                with ProgressBar("Sweeping") as progress:
                    runs = lab.sweep(set_id, settings, knob, values, progress=progress)
                st.session_state["lab_sweep"] = runs[0]["sweep"]
                st.rerun()
            except (EchoMindError, ValueError) as exc:
                st.error(f"Sweep failed: {exc}")
        groups = lab.sweeps(set_id)
        if groups:
            order = list(groups)[::-1]
            chosen = st.session_state.get("lab_sweep")
            group = st.selectbox("Sweep", order, index=order.index(chosen) if chosen in order else 0,
                                 format_func=lambda g: f"{SWEEPS.get(g.split(':')[0], (g,))[0]} · {len(groups[g])} values · {groups[g][0]['created_at'][:16]}")
            knob_name = group.split(":")[0]
            shown = st.multiselect("Metrics", list(METRICS), default=["nDCG@10", "MRR@10", "Recall@k"])
            frame = pd.DataFrame([{knob_name: r["label"].split(" = ", 1)[1], **{m: r["metrics"].get(m, 0) for m in METRICS},
                                   "p50 ms": r["metrics"].get("p50_ms", 0)} for r in groups[group]])
            chart = frame.set_index(knob_name)[shown]
            st.markdown(f"**{', '.join(shown)} across {SWEEPS.get(knob_name, (knob_name,))[0].lower()}**")
            if all(v in ("True", "False") for v in frame[knob_name]):
                st.bar_chart(chart, stack=False)
            else:
                chart.index = chart.index.astype(float)
                st.line_chart(chart)
            st.dataframe(frame.round(4), hide_index=True, width="stretch")

# -- answers ----------------------------------------------------------------------------------------
def answer_value(key: str, value) -> str:
    return f"{value:{ANSWER_METRICS[key][1]}}" if value is not None else "–"


with tabs[4]:
    if set_id is not None:
        st.caption("Each question with gold answers (or marked unanswerable) is asked through the Chat's own path, in a fresh chat, "
                   "with the knobs in the sidebar, and scored as `python -m echomind eval-answers` scores it.")
        rows = lab.question_rows(set_id)
        st.subheader("Gold answers")
        if rows:
            marks = {r["qid"]: ("⊘ " if r["unanswerable"] else "✓ " if r["answers"] else "· ") + r["question"][:90] for r in rows}
            qid = st.selectbox("Question", list(marks), format_func=marks.get, key="gold_question")
            row = next(r for r in rows if r["qid"] == qid)
            golds = st.text_area("Gold answers (one per line)", value="\n".join(row["answers"]), key=f"gold-{qid}",
                                 help="A right answer contains one of them (case, punctuation and articles ignored).")
            unanswerable = st.checkbox("Unanswerable: the right answer is a refusal", value=row["unanswerable"], key=f"unanswerable-{qid}")
            if st.button("Save gold answers"):
                try:
                    lab.set_gold(set_id, qid, golds, unanswerable)
                    st.session_state["lab_flash"] = "Gold answers saved."
                    st.rerun()
                except EchoMindError as exc:
                    st.error(str(exc))
        with st.form("gold-new", border=False, clear_on_submit=True):
            new_question = st.text_input("New question with gold answers")
            new_golds = st.text_area("Its gold answers (one per line)")
            new_unanswerable = st.checkbox("Unanswerable: the right answer is a refusal", key="gold-new-unanswerable")
            if st.form_submit_button("Add question with its answers"):
                try:
                    lab.add_question(set_id, new_question, {}, answers=new_golds, unanswerable=new_unanswerable)
                    st.rerun()
                except EchoMindError as exc:
                    st.error(str(exc))

        asked = lab.gold_questions(set_id)
        st.subheader("Answer run")
        st.caption(f"Answerer: {engine.answerer_label()} · knobs: {describe_settings(settings)} · "
                   f"{sum(not q['unanswerable'] for q in asked)} questions with gold answers, {sum(q['unanswerable'] for q in asked)} unanswerable")
        if asked:
            limit = st.number_input("Questions to ask (the first N; answers take time with a model)", 1, len(asked), min(len(asked), 20))
            if st.button("Run answers", type="primary"):
                try:
                    with ProgressBar("Answering") as progress:
                        run = lab.answer_run(set_id, settings, limit=int(limit), progress=progress)
                    st.session_state["lab_answer_run"] = run["id"]
                    st.rerun()
                except EchoMindError as exc:
                    st.error(str(exc))
        answer_runs = lab.answer_runs(set_id)
        if answer_runs:
            st.subheader("Answer runs")
            st.dataframe(pd.DataFrame([{"run": r["id"], "when": r["created_at"][:19].replace("T", " "), "answerer": r["answerer"], "settings": r["label"],
                                        "questions": r["metrics"].get("questions", 0), "unanswerable": r["metrics"].get("unanswerable", 0),
                                        **{label: r["metrics"].get(k) for k, (label, _) in ANSWER_METRICS.items()}} for r in answer_runs]).round(3),
                         hide_index=True, width="stretch")
            labels = {r["id"]: f"#{r['id']} · {r['answerer'][:40]} · {r['label'][:40]}" for r in answer_runs}
            chosen = st.session_state.get("lab_answer_run")
            chosen = chosen if chosen in labels else answer_runs[-1]["id"]
            run = lab.get_answer_run(st.selectbox("Answer run to inspect", list(labels), index=list(labels).index(chosen), format_func=labels.get))
            m = run["metrics"]
            cols = st.columns(6)
            for col, key in zip(cols, ("containment", "f1", "cited", "unsupported", "refusals", "ttft_p50_ms")):
                col.metric(ANSWER_METRICS[key][0], answer_value(key, m.get(key)))
            st.dataframe(pd.DataFrame([{"metric": label, "value": answer_value(k, m.get(k))} for k, (label, _) in ANSWER_METRICS.items()]),
                         hide_index=True)
            st.subheader("Per question")
            st.dataframe(pd.DataFrame([{
                "question": q["question"], "answer": q["answer"],
                "gold": "(refusal)" if q["unanswerable"] else " | ".join(q["golds"]),
                "contains gold": "—" if q["contains_gold"] is None else "✓" if q["contains_gold"] else "✗",
                "F1": None if q["f1"] is None else round(q["f1"], 3), "refused": "yes" if q["refused"] else "",
                "unsupported claims": " | ".join(q["unsupported"]), "TTFT ms": round(q["ttft_ms"])} for q in run["questions"]]),
                hide_index=True, width="stretch")
            cols = st.columns(2)
            cols[0].download_button("This answer run, per question (CSV)", lab.export_answer_run_csv(run["id"]),
                                    file_name=f"{lab.get_set(set_id)['name']}.answers{run['id']}.csv", mime="text/csv")
            if cols[1].button("Delete this answer run"):
                lab.delete_answer_run(run["id"])
                st.rerun()

# -- import / export --------------------------------------------------------------------------------
with tabs[5]:
    if set_id is not None:
        st.subheader("Export")
        name = lab.get_set(set_id)["name"]
        cols = st.columns(3)
        cols[0].download_button("Test set and runs (JSON)", lab.export_json(set_id), file_name=f"{name}.lab.json", mime="application/json")
        cols[1].download_button("Questions (CSV)", lab.export_questions_csv(set_id), file_name=f"{name}.questions.csv", mime="text/csv")
        runs = lab.runs(set_id)
        if runs:
            cols[2].download_button("Latest run, per question (CSV)", lab.export_run_csv(runs[-1]["id"]), file_name=f"{name}.run{runs[-1]['id']}.csv", mime="text/csv")
    st.subheader("Import")
    upload = st.file_uploader("A Lab export (JSON) or a questions CSV", type=["json", "csv"], key="lab_import")
    if upload is not None and st.button("Import file"):
        try:
            data = upload.getvalue()
            new = lab.import_json(data) if upload.name.endswith(".json") else lab.import_questions_csv(upload.name.rsplit(".", 2)[0], data)
            st.session_state["lab_set"] = new
            st.session_state["lab_flash"] = f"Imported '{lab.get_set(new)['name']}' with {len(lab.questions(new))} questions."
            st.rerun()
        except EchoMindError as exc:
            st.error(str(exc))
    st.subheader("Import a BEIR set")
    st.caption("corpus.jsonl (_id, title, text), queries.jsonl (_id, text) and a qrels TSV (query-id, corpus-id, score); "
               "with answers.jsonl the questions get their gold answers, and a question whose passage is not in the corpus "
               "is unanswerable. The corpus is added to your library like any document.")
    with st.form("beir"):
        beir_name = st.text_input("Name", value="beir")
        corpus = st.file_uploader("corpus.jsonl", type=["jsonl"])
        queries = st.file_uploader("queries.jsonl", type=["jsonl"])
        qrels = st.file_uploader("qrels (TSV)", type=["tsv"])
        answers = st.file_uploader("answers.jsonl (optional: gold answers, {\"_id\", \"answers\": [...]})", type=["jsonl"])
        if st.form_submit_button("Import BEIR set") and corpus and queries and qrels:
            try:
                with ProgressBar("Ingesting the corpus") as progress:
                    new = lab.import_beir(beir_name, corpus.getvalue(), queries.getvalue(), qrels.getvalue(), progress=progress,
                                          answers=answers.getvalue() if answers is not None else None)
                engine.save_indexes()
                st.session_state["lab_set"] = new
                st.session_state["lab_flash"] = f"Imported '{beir_name}': {len(lab.questions(new))} questions."
                st.rerun()
            except EchoMindError as exc:
                st.error(str(exc))
