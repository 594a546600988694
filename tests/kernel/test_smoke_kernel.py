def test_kernel_runs_cells_and_loads_agent(kernel, agent_dir):
    run = kernel.run(
        f"import cireil\nagent = cireil.load({str(agent_dir)!r})\nagent.call('list-dir', path='/workspace')"
    )
    bundle = run.result
    assert bundle is not None
    assert "hello.txt" in bundle["text/plain"]
    assert bundle["application/vnd.cireil.result+json"]["success"] is True
    assert "<table" in bundle["text/html"]
