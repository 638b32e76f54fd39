"""`--config` files of the command-line tests, each wrong in its own way but one."""

BAD_TOML = "[stats\ntask = 'cipher'\n"
FILES = {
    "bad.toml": BAD_TOML,
    "unknown.toml": "[stats]\nbogus = 1\n",
    "limit.toml": "[stats]\nlimit = 0\n",
    "float.toml": "[stats]\nlimit = 1.5\n",
    "preset.toml": '[run]\npreset = "huge"\n',
    "quiet.toml": 'quiet = "yes"\n',
    "list.toml": "[run]\nseed = [1, 2]\n",
    "option.toml": '[run]\noption = ["sampler.sampler.dropout=1.5"]\n',
}
