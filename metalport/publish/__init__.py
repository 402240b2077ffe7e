"""Publishing an approved run: the commit on its branch, a PR bundle, or a push and a draft PR."""

from __future__ import annotations

from metalport.publish.bundle import write_bundle
from metalport.publish.commit import CommitResult, commit_run, commit_title, find_run_commit
from metalport.publish.github import GitHubClient, PullRequest, open_draft_pr, push_branch
from metalport.publish.pr import PR_LABELS, conventions_section

__all__ = ["PR_LABELS", "CommitResult", "GitHubClient", "PullRequest", "commit_run", "commit_title",
           "conventions_section", "find_run_commit", "open_draft_pr", "push_branch", "write_bundle"]
