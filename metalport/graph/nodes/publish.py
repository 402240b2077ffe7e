"""publish: only after approval. The run's commit, then a draft PR on the user's fork, or a PR bundle.

Idempotent: the commit is found by its `Metalport-Run` trailer and the PR by its head branch, so a
publish re-run after a crash makes neither twice. Nothing is pushed without a configured remote
and `GITHUB_TOKEN`; never the base branch, never an upstream remote.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path

import git
from langgraph.config import get_stream_writer
from langgraph.runtime import Runtime

from metalport.agent.provider import PrRequest
from metalport.agent.recipe_provider import RecipeProvider
from metalport.agent.transcript import Redactor
from metalport.config import load_config
from metalport.errors import AgentError, PublishError
from metalport.graph.context import RunContext, kill_point
from metalport.graph.evidence import commit_evidence, describe_run_plan, full_evidence, verdict_lines
from metalport.graph.nodes._common import load_family, load_plan, load_worktree
from metalport.graph.state import PortState
from metalport.publish.pr import BENCH_SCRIPT, benchmark_script
from metalport.publish import (PR_LABELS, GitHubClient, commit_run, conventions_section, open_draft_pr, push_branch,
                               write_bundle)


@dataclass(frozen=True)
class PublishTarget:
    """The user's fork: git remote, its GitHub owner, the base repository and branch, the API."""

    remote: str
    fork_owner: str
    github_repo: str = "pytorch/pytorch"
    base_branch: str = "main"
    api_url: str = "https://api.github.com"


def publish(state: PortState, runtime: Runtime[RunContext]) -> dict:
    """Commit the approved change, then open a draft PR (remote + token) or write a PR bundle."""
    ctx, port, worktree = runtime.context, load_plan(state), load_worktree(state)
    evidence = commit_evidence(state)
    family = load_family(state)
    members = [m.to_dict() for m in family.members]
    subject = ", ".join(family.ops) if family.several else state["op"]
    commit = commit_run(worktree, subject, migrate=port.migrate, evidence=evidence)
    if commit.note:
        get_stream_writer()({"event": "note", "node": "publish", "message": commit.note})
    kill_point("publish:committed")
    redactor = Redactor(secret_env=ctx.secret_env())
    repo = git.Repo(worktree.path)
    diff_stat = repo.git.diff("--stat", f"{worktree.base_commit}..HEAD")
    added = repo.git.diff("--name-only", "--diff-filter=A", f"{worktree.base_commit}..HEAD").split()
    executors = [str(v.get("executor")) for v in state.get("verdicts", {}).values() if v.get("executor")]
    described = _describe(ctx, PrRequest(
        op=state["op"], plan_summary="\n".join(f"- {line.strip()}" for line in describe_run_plan(state)),
        diff_stat=diff_stat, verdicts=tuple(verdict_lines(state)), usage=dict(state.get("usage", {}))))
    from metalport.port import describe_family

    family_lines = describe_family(family)
    if state.get("stacked_on"):
        from metalport.graph.nodes._stack import stack_note

        family_lines.append(stack_note(state["stacked_on"]))
    if state.get("rebased"):
        rebased = state["rebased"]
        family_lines.append(f"rebased at approval onto {rebased['onto'][:12]}: {rebased['why']}"
                            + ("; re-planned and verified again there" if rebased.get("replanned") else ""))
    conventions = conventions_section(state.get("plan", {}), executors, added, members=members, family=family_lines,
                                      model=str(state["options"].get("model", "recipe")),
                                      issue=state["options"].get("issue"))
    body = redactor.text(f"{described.rstrip()}\n\n{conventions}")
    usage = ctx.total_usage(ctx.provider.usage())
    update: dict = {"stage": "publish", "status": "published", "commit": commit.sha, "usage": usage,
                    "reason": f"approved and committed as {commit.sha[:12]}"}
    target, why_not = _target(state, ctx)
    if target is not None:
        push_branch(Path(state["repo_root"]), target.remote, worktree.branch, base_branch=target.base_branch)
        client = GitHubClient.from_env(target.api_url, target.github_repo)
        pr = open_draft_pr(client, fork_owner=target.fork_owner, branch=worktree.branch,
                           base=target.base_branch, title=commit.title, body=body, labels=PR_LABELS)
        return {**update, "pr_url": pr.url, "reason": f"draft PR {pr.url} from {target.remote}/{worktree.branch}"}
    if why_not:
        get_stream_writer()({"event": "note", "node": "publish", "message": why_not})
    bundle = write_bundle(worktree, ctx.run_dir / "bundle", title=commit.title, body=body,
                          evidence=redactor.any(full_evidence(state, commit.sha)),
                          extra={BENCH_SCRIPT: benchmark_script(members)})
    return {**update, "bundle_path": str(bundle), "reason": f"committed {commit.sha[:12]} on {worktree.branch}; "
            f"PR bundle in {bundle}"}


def _describe(ctx: RunContext, request: PrRequest) -> str:
    """The PR body from the run's model; the deterministic template when the model cannot give one.

    An approval never depends on the model: the endpoint being down, the budget spent or a bad
    reply all fall back to `templates/pr_body.md.j2` (with a note on screen).
    """
    try:
        return ctx.provider.describe_pr(request)
    except AgentError as err:
        get_stream_writer()({"event": "note", "node": "publish",
                             "message": f"PR text from the template: the model gave none ({err})"})
        return RecipeProvider().describe_pr(request)


def _target(state: PortState, ctx: RunContext) -> tuple[PublishTarget | None, str | None]:
    options = state["options"]
    config_path = Path(options["config_path"]) if options.get("config_path") else ctx.repo_root / "metalport.yaml"
    raw = dict(load_config(config_path).other.get("remote") or {})
    name = options.get("remote") or raw.get("name")
    if not name:
        return None, None
    if not os.environ.get("GITHUB_TOKEN"):
        return None, f"remote {name!r} configured but GITHUB_TOKEN is not set: writing a PR bundle instead"
    unknown = sorted(set(raw) - {"name", "fork_owner", "github_repo", "base_branch", "api_url"})
    if unknown:
        raise PublishError(f"unknown key(s) {unknown} under remote:", location=str(config_path),
                           hint="use name, fork_owner, github_repo, base_branch, api_url")
    owner = raw.get("fork_owner") or _owner_from_url(Path(state["repo_root"]), name)
    if not owner:
        raise PublishError(f"cannot tell the GitHub owner of remote {name!r}", location=str(config_path),
                           hint="set remote.fork_owner in metalport.yaml")
    fields = {k: str(raw[k]) for k in ("github_repo", "base_branch", "api_url") if raw.get(k)}
    return PublishTarget(remote=name, fork_owner=str(owner), **fields), None


def _owner_from_url(repo_root: Path, remote: str) -> str | None:
    try:
        url = git.Repo(repo_root).remote(remote).url
    except ValueError:
        return None
    found = re.search(r"github\.com[:/]+([^/]+)/", url)
    return found.group(1) if found else None
