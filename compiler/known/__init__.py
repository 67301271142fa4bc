"""irvm's own IR bodies for what a ``.graph`` dump calls without printing."""
