"""The environment a study is given, checked before any work as the scripts check theirs (gymnax's registered ids and
Craftax's), so that a typo is one line and exit code 2, not a traceback after minutes."""


def env_problem(env_id: str, discrete_gymnax: bool = False) -> str:
    """Why the scripts cannot train `env_id`, or, with `discrete_gymnax` (a study that makes gymnax's environment
    itself and builds a categorical policy for it), why the study cannot; '' where it can."""
    from bench.env_cost import bad_env

    if problem := bad_env([env_id]):
        return problem
    if discrete_gymnax:
        if env_id.startswith("Craftax"):
            return f"{env_id}: this study makes its environment with gymnax.make, which has no Craftax; give a gymnax id"
        import gymnax

        env, params = gymnax.make(env_id)
        if not hasattr(env.action_space(params), "n"):
            return f"{env_id} has continuous actions, and this study's policy is categorical: give a discrete-action id"
    return ""
