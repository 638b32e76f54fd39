"""Tutorial task: tr (Dakshina romanized Urdu → Urdu script) on a topology written with Pynini
rewrite rules (``nfst.fsts.translit``) instead of the one-state deletion/insertion MFST.

    NFST_TASKS=examples/tr_rules.py nfst run tr-rules --data-dir DATA --samplers swa,swp-prefix
"""

from nfst.fsts.translit import rule_transliteration
from nfst.tasks import register_task
from nfst.tasks.tr import Transliteration, read_lexicon


@register_task
class RuleTransliteration(Transliteration):
    name = "tr-rules"
    description = "Dakshina Urdu on cdrewrite rules whose marks name the rule that fired"
    paper = {}

    def build_mfst(self, data_dir):
        train = read_lexicon(self.path("train", data_dir))
        return rule_transliteration(
            {a for x, _ in train for a in x}, {b for _, y in train for b in y}, name=self.name
        )
