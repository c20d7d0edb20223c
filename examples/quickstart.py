"""A short tour of sessiontree on the in-memory backend: branches, a fork, context building."""

from __future__ import annotations

import sessiontree
from sessiontree import TreeFork
from sessiontree.context import branch_context


def main() -> None:
    with sessiontree.open_repo("memory://") as repo:
        with repo.create(id="quickstart") as session:
            main_branch = session.create_branch("main", None)
            question = main_branch.append_message({"role": "user", "content": "What is 2 + 2?", "timestamp": 1})
            main_branch.append_message(
                {
                    "role": "assistant",
                    "content": [{"type": "text", "text": "4"}],
                    "stopReason": "stop",
                    "timestamp": 2,
                }
            )
            alternative = session.create_branch("alt", question)
            alternative.append_message({"role": "assistant", "content": [{"type": "text", "text": "Four."}],
                                        "stopReason": "stop", "timestamp": 3})
            session.set_name("arithmetic")
            session.set_label(question, "the question")
            for name in ("main", "alt"):
                messages = branch_context(session, name)
                print(f"{name}: {[m['role'] for m in messages]}  tip={session.get_branch_tip(name)}")
            metadata = session.metadata
        with repo.fork(metadata, TreeFork(id="quickstart-copy")) as copy:
            print("fork:", copy.metadata.id, "of", copy.metadata.parent_session_id, "name:", copy.get_name(),
                  "messages:", copy.get_stats().message_count)


if __name__ == "__main__":
    main()
