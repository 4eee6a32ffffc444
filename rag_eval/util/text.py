"""Model-free term splitting for the framework's own checks (key-fact traceability, a
drafted negative's support), for Chinese and English alike, with no dictionary: a run of
Han characters gives its characters and character bigrams; any other run of letters, or
of digits, is one case-folded term. A letter run stops where Han characters or digits
start ("x上每一点" is "x" then "上每一点", "a²" is "a" then "2"): maths text mixes Latin
variables, Chinese words and numbers without spaces. LaTeX commands are read as the
symbols they stand for (``\\alpha`` is "α", ``\\sin`` "sin", ``\\frac`` nothing), so a fact
written in Unicode shares its terms with a textbook source written in LaTeX. Good enough
to ask "does this fact share its key terms with its source?"."""

from __future__ import annotations

import re
import unicodedata

_HAN = "\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff"
_RUN = re.compile(f"[{_HAN}]+|[^\\W\\d_{_HAN}]+|\\d+", re.UNICODE)
_CJK = re.compile(f"[{_HAN}]")
_COMMAND = re.compile(r"\\([A-Za-z]+)")
_GREEK = (
    "alpha α beta β gamma γ delta δ epsilon ε varepsilon ε zeta ζ eta η theta θ vartheta θ iota ι kappa κ "
    "lambda λ mu μ nu ν xi ξ pi π rho ρ sigma σ tau τ upsilon υ phi φ varphi φ chi χ psi ψ omega ω "
    "Gamma Γ Delta Δ Theta Θ Lambda Λ Xi Ξ Pi Π Sigma Σ Phi Φ Psi Ψ Omega Ω"
).split()
# A Greek letter command becomes the letter (a term, as in Unicode text), a function its
# name; any other command (\cdot, \frac, \approx) is markup or a symbol and becomes a
# space, which splits what is around it as the symbol would (``k\cdot360``: "k", "360").
_LATEX: dict[str, str] = dict(zip(_GREEK[::2], _GREEK[1::2], strict=True))
_FUNCTIONS = "sin cos tan cot sec csc arcsin arccos arctan sinh cosh tanh log lg ln exp lim max min det gcd"
_LATEX.update((name, f" {name} ") for name in _FUNCTIONS.split())  # \sin45 is "sin" and "45"


def _symbol(match: re.Match[str]) -> str:
    return _LATEX.get(match.group(1), " ")


def terms(text: str) -> list[str]:
    """Terms of ``text`` in order (LaTeX commands read, NFKC-normalised, case-folded)."""
    out: list[str] = []
    for run in _RUN.findall(unicodedata.normalize("NFKC", _COMMAND.sub(_symbol, text)).casefold()):
        if _CJK.match(run):
            out.extend(run)
            out.extend(run[i : i + 2] for i in range(len(run) - 1))
        else:
            out.append(run)
    return out
