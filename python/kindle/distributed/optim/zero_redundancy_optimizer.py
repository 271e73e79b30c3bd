"""ZeroRedundancyOptimizer: each rank keeps optimizer state for its share of the parameters only
(ZeRO stage 1). step() updates the local share, then each parameter is broadcast from the rank
that owns it, so every replica ends the step with the same weights while the state (Adam's two
moments, say) takes 1/world_size of the memory per rank. Gradients must already agree across
ranks (DistributedDataParallel averages them)."""
import kindle
import kindle.distributed as dist
from kindle.optim.optimizer import Optimizer

__all__ = ["ZeroRedundancyOptimizer"]


class ZeroRedundancyOptimizer(Optimizer):
    def __init__(self, params, optimizer_class, process_group=None, parameters_as_bucket_view=False,
                 overlap_with_ddp=False, **defaults):
        if overlap_with_ddp:
            raise NotImplementedError("ZeroRedundancyOptimizer: overlap_with_ddp=True is not in Kindle yet")
        params = list(params)
        if not params:
            raise ValueError("ZeroRedundancyOptimizer: optimizer got an empty parameter list")
        if isinstance(params[0], dict):
            raise ValueError("ZeroRedundancyOptimizer: pass a list of parameters; parameter groups can be added "
                             "with add_param_group")
        self.process_group = process_group if process_group is not None else dist.group.WORLD
        if self.process_group is None:
            raise ValueError("ZeroRedundancyOptimizer: the default process group has not been initialized "
                             "(call init_process_group first)")
        self.world_size = dist.get_world_size(self.process_group)
        self.rank = dist.get_rank(self.process_group)
        self.global_rank = dist.get_global_rank(self.process_group, self.rank)
        self._optim_defaults = defaults
        self._optim_constructor = optimizer_class
        self._all_state_dicts = []
        super().__init__(params, defaults)
        self._partition()

    def _partition(self):
        # Greedy: each parameter (largest first) goes to the rank holding the fewest elements, per group.
        self._owner = {}
        local_groups = []
        for group in self.param_groups:
            sizes = [0] * self.world_size
            mine = []
            for p in sorted(group["params"], key=lambda t: -t.numel()):
                r = min(range(self.world_size), key=lambda i: sizes[i])
                sizes[r] += p.numel()
                self._owner[id(p)] = r
                if r == self.rank:
                    mine.append(p)
            local = {k: v for k, v in group.items() if k != "params"}
            local["params"] = mine
            local_groups.append(local)
        self.optim = self._optim_constructor([g for g in local_groups], **self._optim_defaults)

    def add_param_group(self, param_group):
        super().add_param_group(param_group)
        if hasattr(self, "optim"):
            self._partition()

    def step(self, closure=None):
        # The local optimizer reads the (shared) hyper-parameters of this wrapper's groups.
        for mine, group in zip(self.optim.param_groups, self.param_groups):
            for k, v in group.items():
                if k != "params":
                    mine[k] = v
        loss = self.optim.step(closure) if closure is not None else self.optim.step()
        ranks = dist.get_process_group_ranks(self.process_group)
        with kindle.no_grad():
            for group in self.param_groups:
                for p in group["params"]:
                    dist.broadcast(p.data, src=ranks[self._owner[id(p)]], group=self.process_group)
        return loss

    @property
    def state(self):
        return self.optim.state if hasattr(self, "optim") else {}

    @state.setter
    def state(self, value):
        pass

    def consolidate_state_dict(self, to=0):
        """Gathers every rank's share of the state on rank `to` (call on every rank)."""
        gathered = [None] * self.world_size
        dist.all_gather_object(gathered, self.optim.state_dict(), group=self.process_group)
        self._all_state_dicts = gathered if self.global_rank == to else []

    def state_dict(self):
        if not self._all_state_dicts:
            raise RuntimeError("Optimizer state has not been consolidated on this rank. Please call "
                               "`consolidate_state_dict(to=...)` on all ranks beforehand if you meant to save the "
                               "global state.")
        # Global parameter index -> the owning rank's state for it.
        order = [p for g in self.param_groups for p in g["params"]]
        per_rank_params = [[] for _ in range(self.world_size)]
        for g in self.param_groups:
            for p in sorted(g["params"], key=lambda t: -t.numel()):
                per_rank_params[self._owner[id(p)]].append(p)
        index = {id(p): i for i, p in enumerate(order)}
        state = {}
        for r, sd in enumerate(self._all_state_dicts):
            local_ids = [i for g in sd["param_groups"] for i in g["params"]]
            for local_id, p in zip(local_ids, per_rank_params[r]):
                if local_id in sd["state"]:
                    state[index[id(p)]] = sd["state"][local_id]
        groups = []
        for g in self.param_groups:
            d = {k: v for k, v in g.items() if k != "params"}
            d["params"] = [index[id(p)] for p in g["params"]]
            groups.append(d)
        return {"state": state, "param_groups": groups}

    def load_state_dict(self, state_dict):
        order = [p for g in self.param_groups for p in g["params"]]
        for g, saved in zip(self.param_groups, state_dict["param_groups"]):
            g.update({k: v for k, v in saved.items() if k != "params"})
        local = self.optim.state_dict()
        local_params = [p for g in self.optim.param_groups for p in g["params"]]
        position = {id(p): i for i, p in enumerate(order)}
        local["state"] = {}
        for j, p in enumerate(local_params):
            i = position[id(p)]
            if i in state_dict["state"]:
                local["state"][j] = state_dict["state"][i]
        for lg, g in zip(local["param_groups"], self.param_groups):
            lg.update({k: v for k, v in g.items() if k != "params"})
        self.optim.load_state_dict(local)
