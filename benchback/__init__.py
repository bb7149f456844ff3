"""What the benchback scripts share, one job a module, as CleanRL keeps its scripts' in cleanrl_utils/. Each script
holds its algorithm and its framework's own timing; these hold what every script does alike.

    gymnax_envs     gymnax's environments as every script steps them in JAX: made by id, actions clipped, episodes counted
    torch_envs      the torch scripts' environments behind one interface: gymnax's handed over by DLPack, or the ports
    torch_ports     CartPole-v1, Acrobot-v1 and Pendulum-v1 ported to PyTorch with gymnax's dynamics
    gymnasium_envs  Gymnasium's vector environments on the CPU behind the ports' interface, in turn or a process each
    gridworld       gymnax's FourRooms-misc gridworld in NumPy, behind Gymnasium's interface
    craftax_gymnax  Craftax's symbolic environments behind gymnax's interface
    checks          the input checks: bad input is one line and exit code 2
    compiles        compilations and compiler caches, counted once a script calls count_compiles()
    machine         the CPU, the GPU and the commit a record names
    record          the progress line, TensorBoard, the timings and the JSON record, written atomically
    jax_study       the JAX PPO scripts' study modes (--num-seeds, --sync-timing, --rollout python)
    cli             the command line: parse, train, write the record

Importing a module registers nothing and starts nothing; no module imports a script.
"""
