"""Claude's web markup in a reply: thinking apart, artifacts as cards and listed for saving."""

from __future__ import annotations

from treechat.core.artifacts import artifacts_of, split_claude_markup


def test_plain_text_is_left_as_it_is() -> None:
    split = split_claude_markup("No markup here.")
    assert (split.text, split.thinking, split.artifacts) == ("No markup here.", "", ())


def test_code_artifacts_keep_their_language_and_a_fence_longer_than_theirs() -> None:
    code = 'print("```")\nprint(2)'
    split = split_claude_markup(
        f"<antArtifact identifier='sum.py' type='application/vnd.ant.code' language='python' "
        f"title='Sum'>{code}</antArtifact>")
    (artifact,) = split.artifacts
    assert artifact.language == "python" and artifact.file_name == "sum.py"
    assert split.text == f"**Sum** · Code\n\n````python\n{code}\n````"
    (again,) = artifacts_of({"artifacts": [artifact.as_dict()]})
    assert again == artifact


def test_an_artifact_cut_off_at_the_end_is_still_a_card() -> None:
    split = split_claude_markup('<antArtifact type="text/markdown" title="Notes"># Notes\n- a')
    assert split.text == "**Notes** · Document\n\n```markdown\n# Notes\n- a\n```"
    assert split.artifacts[0].file_name == "Notes.md"
